find text/internal
