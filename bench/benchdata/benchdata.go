// Package benchdata holds what several benchmarks set up the same way, so their figures are
// taken against the same data: the route table (routes.sql, which bench/instr/count.sh
// reads with psql too).
package benchdata

import _ "embed"

// RoutesSQL inserts the benches' route table into iu_outbound_route (one statement).
//
//go:embed routes.sql
var RoutesSQL string
