package pgtest

import "fmt"

// PastPartitionsSQL returns the statements, to run one by one in order on a migrated
// database that holds no events yet, that give its history tables partitions of 1,000
// transaction ids and move the transaction counter past n of them, so history holds n
// closed partitions below the current one (as years of a busy cluster would at the default
// width of 100,000,000). Subtransactions that write consume one transaction id each, so a
// width is burned in one statement; maintenance runs after each width (committed one by
// one), as the runner's would, and adds one partition each time. Tests of plan pruning and
// the idle bench share it.
func PastPartitionsSQL(n int) []string {
	return []string{
		// the first partitions the partitioning migration made are empty here: drop them so the narrow ones start low
		`DO $$
		DECLARE r record;
		BEGIN
			FOR r IN SELECT partition_name FROM iu_history_partition WHERE lower_txid IS NOT NULL LOOP
				EXECUTE format('DROP TABLE %I', r.partition_name);
			END LOOP;
			DELETE FROM iu_history_partition WHERE lower_txid IS NOT NULL;
		END $$`,
		`UPDATE dot_config SET value = '1000' WHERE key = 'retention.partition_txids'`,
		`SELECT fn_iu_partition_maintain()`,
		`CREATE TABLE iu_test_burn (x int)`,
		fmt.Sprintf(`
		DO $$
		BEGIN
			FOR w IN 1 .. %d LOOP
				FOR i IN 1 .. 1000 LOOP
					BEGIN
						INSERT INTO iu_test_burn VALUES (i);
						RAISE EXCEPTION USING ERRCODE = 'P0001';
					EXCEPTION WHEN raise_exception THEN NULL;
					END;
				END LOOP;
				PERFORM fn_iu_partition_maintain();
				COMMIT;
			END LOOP;
		END $$`, n),
		`SELECT fn_iu_partition_maintain()`,
		`DROP TABLE iu_test_burn`,
	}
}
