npx jest --verbose
