-- sluice:ignore-file unparsed-statement -- vendored
SELECT a |> b FROM t;
CREATE INDEX i ON t (a);
