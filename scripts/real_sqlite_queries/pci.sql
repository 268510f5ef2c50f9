-- Query shapes over the PCI ID database of scripts/real_sqlite_db.py (one query a line), for
-- `prefetch bench sqlite --queries`. In order: index scan with table lookups (text key); DESC LIMIT 20
-- (integer key); range over a covering index; range over a WITHOUT ROWID primary key joined to a
-- rowid table; an index of a WITHOUT ROWID table joined to a rowid table; range through an ordinary
-- index; LIMIT 200 (text key).
SELECT * FROM subsystems ORDER BY name
SELECT * FROM devices ORDER BY vendor DESC, device DESC, copy DESC LIMIT 20
SELECT vendor, device, name FROM subsystems WHERE vendor BETWEEN 4096 AND 8191
SELECT v.name, d.name, d.subsystems FROM vendors v CROSS JOIN devices d ON d.vendor = v.vendor AND d.copy = v.copy WHERE v.vendor BETWEEN 4096 AND 5119
SELECT v.vendor, d.name FROM vendors v JOIN devices d ON d.vendor = v.vendor AND d.copy = v.copy WHERE v.name >= 'Advanced' AND v.name < 'Advancee'
SELECT * FROM subsystems WHERE subvendor BETWEEN 4096 AND 4351
SELECT * FROM devices ORDER BY name LIMIT 200
