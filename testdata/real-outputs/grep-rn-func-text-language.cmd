grep -rn '^func ' text/language
