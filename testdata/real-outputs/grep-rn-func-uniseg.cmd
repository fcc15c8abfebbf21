grep -rn '^func ' uniseg
