set terminal pngcairo size 1500,520 noenhanced
set output 'tools/sim/results/time-vs-nodes.png'
set multiplot layout 1,3 title 'allreduce time against node count (1 rank per node, 100 Gbit/s fat tree, simulated)'
set logscale xy
set xtics (16, 128, 1024)
set xlabel 'nodes'
set ylabel 'simulated us'
set grid
set key left top
set title '4 KiB'
plot 'tools/sim/results/time-vs-nodes.dat' index 0 with linespoints title 'alg:auto', 'tools/sim/results/time-vs-nodes.dat' index 1 with linespoints title 'alg:rd', 'tools/sim/results/time-vs-nodes.dat' index 2 with linespoints title 'alg:rab', 'tools/sim/results/time-vs-nodes.dat' index 3 with linespoints title 'alg:ring', 'tools/sim/results/time-vs-nodes.dat' index 4 with linespoints title 'best SMPI', 'tools/sim/results/time-vs-nodes.dat' index 5 with linespoints title 'bound'
set title '1 MiB'
plot 'tools/sim/results/time-vs-nodes.dat' index 6 with linespoints title 'alg:auto', 'tools/sim/results/time-vs-nodes.dat' index 7 with linespoints title 'alg:rd', 'tools/sim/results/time-vs-nodes.dat' index 8 with linespoints title 'alg:rab', 'tools/sim/results/time-vs-nodes.dat' index 9 with linespoints title 'alg:ring', 'tools/sim/results/time-vs-nodes.dat' index 10 with linespoints title 'best SMPI', 'tools/sim/results/time-vs-nodes.dat' index 11 with linespoints title 'bound'
set title '256 MiB'
plot 'tools/sim/results/time-vs-nodes.dat' index 12 with linespoints title 'alg:auto', 'tools/sim/results/time-vs-nodes.dat' index 13 with linespoints title 'alg:rd', 'tools/sim/results/time-vs-nodes.dat' index 14 with linespoints title 'alg:rab', 'tools/sim/results/time-vs-nodes.dat' index 15 with linespoints title 'alg:ring', 'tools/sim/results/time-vs-nodes.dat' index 16 with linespoints title 'best SMPI', 'tools/sim/results/time-vs-nodes.dat' index 17 with linespoints title 'bound'
unset multiplot
