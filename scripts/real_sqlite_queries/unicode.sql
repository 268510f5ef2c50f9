-- Query shapes over the Unicode database of scripts/real_sqlite_db.py (one query a line), for
-- `prefetch bench sqlite --queries`. In order: index scan with table lookups (text key); DESC LIMIT 20
-- (integer key); range over a covering index; range over a WITHOUT ROWID primary key joined to a
-- rowid table; an index of a WITHOUT ROWID table joined to a rowid table; range through an ordinary
-- index; LIMIT 200 (text key).
SELECT * FROM chars ORDER BY name
SELECT * FROM chars ORDER BY code DESC LIMIT 20
SELECT code, name FROM chars WHERE category BETWEEN 'L' AND 'Lz'
SELECT s.code, s.script, c.name, c.category FROM char_script s JOIN chars c ON c.code = s.code AND c.copy = s.copy WHERE s.code BETWEEN 256 AND 4095
SELECT s.code, c.name, c.bidi FROM char_script s JOIN chars c ON c.code = s.code AND c.copy = s.copy WHERE s.script = 'Arabic'
SELECT * FROM chars WHERE block_start BETWEEN 1024 AND 8191
SELECT * FROM chars ORDER BY name LIMIT 200
