npx tsc -p . --pretty false
