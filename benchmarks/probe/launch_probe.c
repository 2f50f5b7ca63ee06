/* Host cost of cuLaunchKernel from C, no Python: the floor for any launcher.
 * Build: cc -O2 launch_probe.c -o launch_probe -ldl ; run: ./launch_probe
 * Loads a 4-parameter kernel from embedded PTX (3 pointers + i32, stores one
 * value), launches it in batches of N with a synchronize between batches
 * (untimed), on the legacy default stream, the per-thread stream and a
 * created non-blocking stream. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdint.h>
#include <time.h>

typedef int CUresult;
typedef void *CUfunction, *CUmodule, *CUstream, *CUcontext;
static const char *PTX =
  ".version 8.0\n.target sm_90\n.address_size 64\n"
  ".visible .entry k(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n) {\n"
  "  .reg .pred %p<2>; .reg .u64 %rd<2>; .reg .u32 %r<3>;\n"
  "  mov.u32 %r1, %tid.x; setp.ne.u32 %p1, %r1, 0; @%p1 bra DONE;\n"
  "  ld.param.u64 %rd1, [c]; ld.param.u32 %r2, [n]; st.global.u32 [%rd1], %r2;\n"
  "DONE: ret;\n}\n";

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

#define SYM(T, name) typedef T; name##_t name = (name##_t)dlsym(lib, #name); if (!name) { printf("no %s\n", #name); return 1; }
int main(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) { printf("no libcuda\n"); return 1; }
  SYM(CUresult (*cuInit_t)(unsigned), cuInit)
  SYM(CUresult (*cuDeviceGet_t)(int *, int), cuDeviceGet)
  SYM(CUresult (*cuDevicePrimaryCtxRetain_t)(CUcontext *, int), cuDevicePrimaryCtxRetain)
  SYM(CUresult (*cuCtxSetCurrent_t)(CUcontext), cuCtxSetCurrent)
  SYM(CUresult (*cuModuleLoadData_t)(CUmodule *, const void *), cuModuleLoadData)
  SYM(CUresult (*cuModuleGetFunction_t)(CUfunction *, CUmodule, const char *), cuModuleGetFunction)
  SYM(CUresult (*cuMemAlloc_v2_t)(uint64_t *, size_t), cuMemAlloc_v2)
  SYM(CUresult (*cuCtxSynchronize_t)(void), cuCtxSynchronize)
  SYM(CUresult (*cuStreamCreate_t)(CUstream *, unsigned), cuStreamCreate)
  SYM(CUresult (*cuLaunchKernel_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                   unsigned, CUstream, void **, void **), cuLaunchKernel)
  int dev; CUcontext ctx; CUmodule mod; CUfunction fn; uint64_t buf;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) { printf("init failed\n"); return 1; }
  CUresult r = cuModuleLoadData(&mod, PTX);
  if (r) { printf("module load failed %d\n", r); return 1; }
  if (cuModuleGetFunction(&fn, mod, "k") || cuMemAlloc_v2(&buf, 64)) { printf("setup failed\n"); return 1; }
  uint64_t a = buf, b = buf, c = buf; uint32_t n = 16;
  void *params[4] = {&a, &b, &c, &n};
  CUstream created; cuStreamCreate(&created, 1 /* non-blocking */);
  struct { const char *name; CUstream s; } streams[] = {
    {"legacy default stream (0)", (CUstream)0}, {"per-thread default stream", (CUstream)2},
    {"created non-blocking stream", created}};
  int sizes[] = {20, 200};
  for (int si = 0; si < 3; si++) for (int zi = 0; zi < 2; zi++) {
    int N = sizes[zi], batches = 100; double total = 0;
    for (int w = 0; w < 200; w++) cuLaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, streams[si].s, params, 0);
    cuCtxSynchronize();
    for (int bt = 0; bt < batches; bt++) {
      double t0 = now();
      for (int i = 0; i < N; i++)
        if ((r = cuLaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, streams[si].s, params, 0))) { printf("launch failed %d\n", r); return 1; }
      total += now() - t0;
      cuCtxSynchronize();
    }
    printf("C cuLaunchKernel, %s, batches of %d: %.2f us/launch\n", streams[si].name, N, total / (batches * N) * 1e6);
  }
  return 0;
}
