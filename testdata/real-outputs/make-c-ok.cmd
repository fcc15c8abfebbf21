make -k
