grep -rn '^func ' text/encoding
