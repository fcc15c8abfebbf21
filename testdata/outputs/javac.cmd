javac -Xlint:all -d out @sources.txt
