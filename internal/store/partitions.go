package store

import "encoding/json"

// PartitionMaintenance is what fn_iu_partition_maintain returns. Two shapes:
//
//	busy   another session holds the partition-maintenance lock: nothing was done, and
//	       holder names that session (pid, login) when it could be read
//	done   the call ran: partitions created ahead of the txids in use (created), the
//	       default partitions' rows made a partition of their own (default_attached),
//	       partitions ahead re-cut to a changed width (recut), closes recorded (closed)
//
// The done shape also says how far ahead the partitions reach (ahead_txids, in txids past
// the next one to be assigned) and whether the call changed nothing because of a lock or a
// race: lock_timeout (the tables' locks were not free; blocked_by names who held them),
// default_raced (txids reached a range while it was attached) or error (another failure of
// a lock or a race, with its SQLSTATE). Each means: nothing changed, the next call tries
// again. default_rows counts the rows (up to 1,000) in each history table's default
// partition, where rows land only when maintenance has fallen behind, until its next call
// turns them into a partition (default_stuck: they could not be, see the runbook).
type PartitionMaintenance struct {
	Busy            bool                `json:"busy"`
	Holder          *HistoryLockHolder  `json:"holder,omitempty"`
	LockTimeout     bool                `json:"lock_timeout,omitempty" contract:"done"`
	BlockedBy       []HistoryLockHolder `json:"blocked_by,omitempty"`
	DefaultRaced    bool                `json:"default_raced,omitempty" contract:"done"`
	Error           *SQLFailure         `json:"error,omitempty"`
	Behind          bool                `json:"behind,omitempty" contract:"done"`
	Created         []string            `json:"created,omitempty" contract:"done"`
	DefaultAttached []string            `json:"default_attached,omitempty" contract:"done"`
	Recut           []string            `json:"recut,omitempty" contract:"done"`
	Closed          []string            `json:"closed,omitempty" contract:"done"`
	Partitions      int64               `json:"partitions,omitempty" contract:"done"`
	NewestUpperTxid string              `json:"newest_upper_txid,omitempty" contract:"done"`
	NextTxid        string              `json:"next_txid,omitempty" contract:"done"`
	AheadTxids      int64               `json:"ahead_txids,omitempty" contract:"done"`
	WidthTxids      int64               `json:"width_txids,omitempty" contract:"done"`
	DefaultStuck    bool                `json:"default_stuck,omitempty" contract:"done"`
	DefaultRows     *DefaultPartitions  `json:"default_rows,omitempty" contract:"done"`
	Raw             json.RawMessage     `json:"-"` // the document as the SQL returned it
}

// HistoryLockHolder is a session that holds a lock maintenance or retention needed: the holder of
// the partition-maintenance lock (a busy answer's holder) or of a table lock (a
// lock_timeout answer's blocked_by). State, the transaction's start and age are null when
// the function owner may not read them (pg_read_all_stats); a prepared transaction has no
// pid but a gid.
type HistoryLockHolder struct {
	Pid             *int64  `json:"pid"`
	Login           *string `json:"login"`
	ApplicationName *string `json:"application_name"`
	XactAgeSeconds  *int64  `json:"xact_age_seconds"`
	State           *string `json:"state,omitempty"`
	XactStart       *string `json:"xact_start,omitempty"`
	PreparedGID     *string `json:"prepared_gid,omitempty"`
	Relation        *string `json:"relation,omitempty"`
	Mode            *string `json:"mode,omitempty"`
}

// SQLFailure is a failure a maintenance or retention call answered instead of raising.
type SQLFailure struct {
	SQLState string `json:"sqlstate"`
	Message  string `json:"message"`
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

// DefaultRowsLeft reports rows in a default partition after the call: maintenance fell
// behind and has not turned them into a partition yet (or could not: DefaultStuck).
func (p PartitionMaintenance) DefaultRowsLeft() bool {
	return p.DefaultRows != nil && (p.DefaultRows.EventOutbox > 0 || p.DefaultRows.IuRouteAttempt > 0)
}

// Outcome names the answer for logs and metrics: busy (the maintenance lock is held
// elsewhere), lock_timeout, raced, error (each: nothing changed this call), or ok.
func (p PartitionMaintenance) Outcome() string {
	switch {
	case p.Busy:
		return "busy"
	case p.LockTimeout:
		return "lock_timeout"
	case p.DefaultRaced:
		return "raced"
	case p.Error != nil:
		return "error"
	}
	return "ok"
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
