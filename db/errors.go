package db

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Error codes shared by every service; web maps each one to an HTTP status.
const (
	EINVALID       = "invalid"
	EUNAUTHORIZED  = "unauthorized"
	EFORBIDDEN     = "forbidden"
	ENOTFOUND      = "not_found"
	ECONFLICT      = "conflict"
	ESOLDOUT       = "sold_out"
	ELIMITREACHED  = "limit_reached"
	EALREADY       = "already_grabbed"
	ENOTSTARTED    = "not_started"
	EENDED         = "ended"
	EEXPIRED       = "expired"
	ETOOLATE       = "too_late"
	ENOTCONFIGURED = "not_configured"
	ERATELIMITED   = "rate_limited"
	ETOOLARGE      = "too_large"
	EUNAVAILABLE   = "unavailable"
	EINTERNAL      = "internal"
	// Proof of work (a goods' pow_bits): no solution sent, or one that is
	// wrong, expired, for other goods or used before.
	EPOWREQUIRED = "pow_required"
	EPOWINVALID  = "pow_invalid"
	// Fair sales: a grab of a queued sale without a valid admission, a
	// join of a queue whose stock is gone, a grab of a raffle's goods.
	ENOTADMITTED = "not_admitted"
	EQUEUECLOSED = "queue_closed"
	ENOTDRAWN    = "not_drawn"
)

// Error is a domain error with a code and a message that is safe to show a user.
type Error struct {
	Code    string
	Message string
	// RetryAfter is when a rate_limited or unavailable request may be tried again (0: a second).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf builds a domain error with the given code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Typed errors returned by the grab scripts and state transitions.
var (
	ErrSoldOut        = &Error{Code: ESOLDOUT, Message: "sold out"}
	ErrLimitReached   = &Error{Code: ELIMITREACHED, Message: "you have reached the limit for this item"}
	ErrAlreadyGrabbed = &Error{Code: EALREADY, Message: "you have already grabbed this"}
	ErrNotStarted     = &Error{Code: ENOTSTARTED, Message: "the sale has not started yet"}
	ErrEnded          = &Error{Code: EENDED, Message: "the sale has ended"}
	ErrExpired        = &Error{Code: EEXPIRED, Message: "this has expired"}
	ErrTooLate        = &Error{Code: ETOOLATE, Message: "it is too late for that"}
	ErrNotFound       = &Error{Code: ENOTFOUND, Message: "not found"}
	ErrUnauthorized   = &Error{Code: EUNAUTHORIZED, Message: "please log in"}
	ErrForbidden      = &Error{Code: EFORBIDDEN, Message: "you may not do that"}
	ErrRateLimited    = &Error{Code: ERATELIMITED, Message: "too many requests; slow down and try again shortly"}
	ErrUnavailable    = &Error{Code: EUNAVAILABLE, Message: "the service is briefly unavailable; try again shortly"}
	ErrPowRequired    = &Error{Code: EPOWREQUIRED, Message: "this sale asks for a proof of work: get a challenge from /api/pow and send its solution in X-Pow"}
	ErrPowInvalid     = &Error{Code: EPOWINVALID, Message: "the proof of work is wrong, expired or used already: solve a new challenge"}
	ErrNotAdmitted    = &Error{Code: ENOTADMITTED, Message: "this sale has a waiting room: join the queue and grab with the admission it gives you (X-Admission) while it is good"}
	ErrQueueClosed    = &Error{Code: EQUEUECLOSED, Message: "the queue is closed: every unit has gone"}
	ErrNotDrawn       = &Error{Code: ENOTDRAWN, Message: "this goods is sold by a draw, not a race: enter the raffle before the start; winners get an order"}
)

// ErrorCode returns the code of a domain error, or EINTERNAL for any other error.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the message of a domain error, or a generic one that hides internals.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// FieldErrors maps an input field (its JSON name) to what is wrong with it.
type FieldErrors map[string]string

// InvalidFields is the one invalid-input error that names fields: an
// EINVALID error that says which fields are wrong, so forms can show each
// message beside its input.
type InvalidFields struct{ Fields FieldErrors }

func (e *InvalidFields) Error() string { return EINVALID + ": " + e.message() }

// Unwrap makes ErrorCode and ErrorMessage see an ordinary EINVALID error.
func (e *InvalidFields) Unwrap() error { return &Error{Code: EINVALID, Message: e.message()} }

func (e *InvalidFields) message() string { return e.Fields.Join(nil, ": ", "; ") }

// Join writes the fields in name order, each as name, colon and its
// complaint passed through each (nil: as it is), separated by sep: the
// invalid-input message ("stock: must be at least 1; title: is required"),
// or its translation with each complaint translated.
func (f FieldErrors) Join(each func(string) string, colon, sep string) string {
	names := make([]string, 0, len(f))
	for k := range f {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		msg := f[k]
		if each != nil {
			msg = each(msg)
		}
		parts[i] = k + colon + msg
	}
	return strings.Join(parts, sep)
}

// Err returns nil when there are no field errors, else an *InvalidFields.
func (f FieldErrors) Err() error {
	if len(f) == 0 {
		return nil
	}
	return &InvalidFields{Fields: f}
}

// FieldErrorf is an invalid-input error on one field.
func FieldErrorf(field, format string, args ...any) *InvalidFields {
	return &InvalidFields{Fields: FieldErrors{field: fmt.Sprintf(format, args...)}}
}

// FieldsOf returns the fields an error names, or nil when it names none.
func FieldsOf(err error) FieldErrors {
	var fe *InvalidFields
	if errors.As(err, &fe) {
		return fe.Fields
	}
	return nil
}

// FieldOf returns the first field (by name) an error names, or "" when it names none.
func FieldOf(err error) string {
	f := FieldsOf(err)
	names := make([]string, 0, len(f))
	for k := range f {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}
