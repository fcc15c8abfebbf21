gcc -fsyntax-only -Wall -Wextra -Wconversion -Isrc src/*.c
