set terminal pngcairo size 1000,640 noenhanced
set output 'tools/sim/results/busbw-1024n.png'
set logscale x 2
set xlabel 'bytes'
set format x '%.0s%cB'
set xtics 4
set ylabel 'bus bandwidth (GB/s)'
set key left top
set grid
set title 'allreduce, 1024 simulated ranks'
plot 'tools/sim/results/busbw-1024n.dat' index 0 with linespoints title 'alg:auto', 'tools/sim/results/busbw-1024n.dat' index 1 with linespoints title 'smpi:ompi', 'tools/sim/results/busbw-1024n.dat' index 2 with linespoints title 'smpi:rab1', 'tools/sim/results/busbw-1024n.dat' index 3 with linespoints title 'smpi:rdb', 'tools/sim/results/busbw-1024n.dat' index 4 with linespoints title 'bound'
