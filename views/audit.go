package views

import (
	"strconv"
	"time"
)

// AuditRow is one audit log entry as the audit page shows it.
type AuditRow struct {
	ID      int64
	At      time.Time
	ActorID int64
	Actor   string
	Action  string
	Target  string
	Detail  string
	IP      string
}

// AuditView is one page of the audit log, newest first.
type AuditView struct {
	Entries     []AuditRow
	OlderBefore int64 // the before= of the next, older page; 0 when this is the last
}

// OlderPath links the next, older page.
func (v AuditView) OlderPath() string {
	return "/admin/audit?before=" + strconv.FormatInt(v.OlderBefore, 10)
}
