javac -Xlint:all -Xmaxwarns 1000 -d out @sources.txt
