git show -p 75af0dd
