SELECT * FROM subsystems ORDER BY name
