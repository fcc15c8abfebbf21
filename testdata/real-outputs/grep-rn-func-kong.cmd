grep -rn '^func ' kong
