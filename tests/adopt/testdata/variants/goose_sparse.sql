-- variant: goose_sparse
-- models:  a goose history that is not 0..53: the first generation squashed its early
--          migrations, and the database was created from a squashed baseline, so only the
--          versions 2, 8, 9, 52 and 53 were ever recorded (plus goose's version 0).
-- adoption: ADOPT.
-- why:     spec §13: the package's goose table is iu_core_db_version and it "never reads or
--          writes goose_db_version". Whatever that table holds, adoption must not read it,
--          not rely on it and leave it exactly as it was.
-- check:   SELECT array_agg(version_id ORDER BY id) = '{0,2,8,9,52,53}' FROM goose_db_version
DELETE FROM goose_db_version WHERE version_id NOT IN (0, 2, 8, 9, 52, 53);
