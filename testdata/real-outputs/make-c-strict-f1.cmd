make -k CFLAGS=-O2 -Wall -Wextra -Wconversion -Wsign-conversion -Wshadow -Isrc
