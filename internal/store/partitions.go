package store

import "encoding/json"

// PartitionMaintenance is what fn_iu_partition_maintain returns. Two shapes:
//
//	busy   another session is maintaining the partitions right now: nothing was done
//	done   partitions created ahead of the txids in use (created), closes recorded (closed)
//
// The done shape also says how far ahead the partitions reach (ahead_txids, in txids past
// the next one to be assigned), whether a lock wait gave up (lock_timeout) or a producer's
// row raced into the default partition (default_raced; both mean: try again next call),
// and how many rows sit in the default partitions (counted up to 1,000), where rows land
// only when maintenance has fallen behind and which retention never drops.
type PartitionMaintenance struct {
	Busy            bool               `json:"busy"`
	LockTimeout     bool               `json:"lock_timeout,omitempty" contract:"done"`
	DefaultRaced    bool               `json:"default_raced,omitempty" contract:"done"`
	Created         []string           `json:"created,omitempty" contract:"done"`
	Closed          []string           `json:"closed,omitempty" contract:"done"`
	Partitions      int64              `json:"partitions,omitempty" contract:"done"`
	NewestUpperTxid string             `json:"newest_upper_txid,omitempty" contract:"done"`
	NextTxid        string             `json:"next_txid,omitempty" contract:"done"`
	AheadTxids      int64              `json:"ahead_txids,omitempty" contract:"done"`
	WidthTxids      int64              `json:"width_txids,omitempty" contract:"done"`
	DefaultRows     *DefaultPartitions `json:"default_rows,omitempty" contract:"done"`
	Raw             json.RawMessage    `json:"-"` // the document as the SQL returned it
}

// DefaultPartitions counts the rows (up to 1,000) in each history table's default partition.
type DefaultPartitions struct {
	EventOutbox    int64 `json:"event_outbox"`
	IuRouteAttempt int64 `json:"iu_route_attempt"`
}

func (p PartitionMaintenance) contractShape() string {
	if p.Busy {
		return "busy"
	}
	return "done"
}

// Behind reports whether maintenance has fallen behind: rows sit in a default partition.
func (p PartitionMaintenance) Behind() bool {
	return p.DefaultRows != nil && (p.DefaultRows.EventOutbox > 0 || p.DefaultRows.IuRouteAttempt > 0)
}

// ParsePartitionMaintenance reads a maintenance result (missing keys fail, unknown keys
// are ignored).
func ParsePartitionMaintenance(raw []byte) (PartitionMaintenance, error) {
	return parsePartitionMaintenance(raw, lenient)
}

func parsePartitionMaintenance(raw []byte, strictKeys bool) (PartitionMaintenance, error) {
	var p PartitionMaintenance
	if err := decode("fn_iu_partition_maintain() result", raw, &p, strictKeys); err != nil {
		return PartitionMaintenance{}, err
	}
	p.Raw = append(json.RawMessage(nil), raw...)
	return p, nil
}
