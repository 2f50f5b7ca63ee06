#!/bin/bash
# session 24 device call 4: Nsight Compute L2 breakdown of tutorial-03 127x4096x4096 (tilec TMA, tilec pointer epilogue, Triton), L2 clean (ncu's default cache control)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/sk24p/cache
M=gpu__time_duration.sum,lts__t_bytes.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_lookup_hit.sum,lts__t_sectors_srcunit_tex_lookup_miss.sum,lts__t_requests_srcunit_tex.sum,dram__bytes_read.sum,dram__bytes_write.sum
timeout 240 ncu --clock-control none --csv --metrics $M -k regex:mm_ python3 benchmarks/probe/skinny_probe.py once > $OUT/ncu-l2.csv 2> $OUT/ncu-l2.err
echo "rc $?"; grep -E "mm_" $OUT/ncu-l2.csv | awk -F'","' '{print $1" "$5" | "$(NF-2)" | "$NF}'
tail -3 $OUT/ncu-l2.err
