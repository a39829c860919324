SELECT 1;
SELECT $$ never closed;
