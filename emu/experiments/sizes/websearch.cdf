# Flow-size distribution of a web-search cluster (DCTCP, Alizadeh et al., SIGCOMM 2010),
# as the HPCC paper (Li et al., SIGCOMM 2019) and its successors evaluate with.
# Source: github.com/alibaba-edu/High-Precision-Congestion-Control,
#         traffic_gen/WebSearch_distribution.txt (data: CDF points).
# Format: one point a line, "<flow size in bytes> <cumulative percent>"; sizes between
# two points are interpolated linearly (emu.experiments.sizedist).
0 0
10000 15
20000 20
30000 30
50000 40
80000 53
200000 60
1000000 70
2000000 80
5000000 90
10000000 97
30000000 100
