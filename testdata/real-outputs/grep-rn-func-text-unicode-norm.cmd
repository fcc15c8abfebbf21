grep -rn '^func ' text/unicode/norm
