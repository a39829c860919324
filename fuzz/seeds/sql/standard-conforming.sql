-- Where a string ends depends on standard_conforming_strings (issue 38 item 3).
CREATE TABLE t (a int, b text);
SET standard_conforming_strings = off;
SELECT 'a\'';
CREATE INDEX hidden_when_off ON t (a);
SELECT 'it\'s'; SELECT E'\\';
SET standard_conforming_strings TO on;
SELECT 'a\'; CREATE INDEX visible_when_on ON t (b);
SET LOCAL standard_conforming_strings = off;
SELECT E'\'' || '\'';
RESET standard_conforming_strings;
SELECT U&'d\0061t\+000061' UESCAPE '\';
