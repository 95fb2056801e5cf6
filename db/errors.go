package db

import (
	"errors"
	"fmt"
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
