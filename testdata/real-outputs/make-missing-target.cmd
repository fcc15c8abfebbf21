make -d install
