git show -p c554871
