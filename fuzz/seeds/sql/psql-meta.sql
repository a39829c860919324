-- psql's own language: what psql runs that is not in this file's SQL (issue 38 item 2).
CREATE TABLE t (a int, b text);
\set ON_ERROR_STOP on
\set tbl t
SELECT * FROM :tbl WHERE b = :'tbl';
\ir other.sql
\i ./other.sql
\include other.sql
\include_relative nested/other.sql
SELECT format('CREATE INDEX ON %I (a)', 't') \gexec
\if true
CREATE INDEX t_a ON t (a);
\elif false
SELECT 1;
\else
SELECT 2;
\endif
COPY t (a, b) FROM stdin;
1	one; CREATE INDEX hidden ON t (b);
2	two
\.
CREATE INDEX t_b ON t (b);
