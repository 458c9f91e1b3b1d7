set terminal pngcairo size 1000,640 noenhanced
set output 'tools/sim/results/busbw-128n-25g.png'
set logscale x 2
set xlabel 'bytes'
set format x '%.0s%cB'
set xtics 4
set ylabel 'bus bandwidth (GB/s)'
set key left top
set grid
set title 'allreduce, 128 simulated ranks'
plot 'tools/sim/results/busbw-128n-25g.dat' index 0 with linespoints title 'alg:auto', 'tools/sim/results/busbw-128n-25g.dat' index 1 with linespoints title 'alg:rd', 'tools/sim/results/busbw-128n-25g.dat' index 2 with linespoints title 'alg:rab', 'tools/sim/results/busbw-128n-25g.dat' index 3 with linespoints title 'alg:ring', 'tools/sim/results/busbw-128n-25g.dat' index 4 with linespoints title 'smpi:ompi', 'tools/sim/results/busbw-128n-25g.dat' index 5 with linespoints title 'smpi:rab1', 'tools/sim/results/busbw-128n-25g.dat' index 6 with linespoints title 'smpi:rdb', 'tools/sim/results/busbw-128n-25g.dat' index 7 with linespoints title 'bound'
