package web

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
)

// statusOf is the one table from domain error codes to HTTP status.
var statusOf = map[string]int{
	db.EINVALID:       fiber.StatusBadRequest,
	db.EUNAUTHORIZED:  fiber.StatusUnauthorized,
	db.EFORBIDDEN:     fiber.StatusForbidden,
	db.ENOTFOUND:      fiber.StatusNotFound,
	db.ECONFLICT:      fiber.StatusConflict,
	db.ESOLDOUT:       fiber.StatusConflict,
	db.ELIMITREACHED:  fiber.StatusConflict,
	db.EALREADY:       fiber.StatusConflict,
	db.ENOTSTARTED:    fiber.StatusConflict,
	db.EENDED:         fiber.StatusConflict,
	db.EEXPIRED:       fiber.StatusConflict,
	db.ETOOLATE:       fiber.StatusConflict,
	db.ENOTCONFIGURED: fiber.StatusConflict,
	db.ERATELIMITED:   fiber.StatusTooManyRequests,
	db.ETOOLARGE:      fiber.StatusRequestEntityTooLarge,
	db.EUNAVAILABLE:   fiber.StatusServiceUnavailable,
	db.EINTERNAL:      fiber.StatusInternalServerError,
}

// fiberCodes turns Fiber's own errors (unknown route, wrong method, body too large) into domain codes.
var fiberCodes = map[int]string{
	fiber.StatusNotFound:              db.ENOTFOUND,
	fiber.StatusMethodNotAllowed:      db.ENOTFOUND,
	fiber.StatusRequestEntityTooLarge: db.EINVALID,
	fiber.StatusBadRequest:            db.EINVALID,
	fiber.StatusUnauthorized:          db.EUNAUTHORIZED,
	fiber.StatusForbidden:             db.EFORBIDDEN,
	fiber.StatusTooManyRequests:       db.ERATELIMITED,
}

// ErrorBody is the contract's error shape.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// sentinelBodies are the API error bodies of db's sentinel errors, encoded
// once: in a spike nearly every answer is one of these refusals.
var sentinelBodies = func() map[*db.Error][]byte {
	m := map[*db.Error][]byte{}
	for _, e := range []*db.Error{db.ErrSoldOut, db.ErrLimitReached, db.ErrAlreadyGrabbed, db.ErrNotStarted,
		db.ErrEnded, db.ErrExpired, db.ErrTooLate, db.ErrNotFound, db.ErrUnauthorized, db.ErrForbidden, db.ErrRateLimited} {
		m[e] = errorBody(e.Code, e.Message)
	}
	return m
}()

func errorBody(code, msg string) []byte {
	var body ErrorBody
	body.Error.Code, body.Error.Message = code, msg
	b, _ := json.Marshal(body)
	return b
}

// isAPI tells whether the request gets the contract's JSON errors rather than pages.
func isAPI(c *fiber.Ctx) bool {
	return strings.HasPrefix(c.Path(), "/api") || strings.HasPrefix(c.Path(), "/ws")
}

// errorHandler answers every error: the contract's JSON under /api, a friendly page elsewhere.
func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	setRetryAfter(c, err)
	if e, ok := err.(*db.Error); ok && isAPI(c) {
		if body, ok := sentinelBodies[e]; ok {
			c.Status(statusOf[e.Code]).Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
			return c.Send(body)
		}
	}
	code, msg := db.ErrorCode(err), db.ErrorMessage(err)
	var fe *fiber.Error
	if errors.As(err, &fe) {
		code = fiberCodes[fe.Code]
		if code == "" {
			code = db.EINVALID
			if fe.Code >= 500 {
				code = db.EINTERNAL
			}
		}
		msg = fe.Message
		if code == db.EINTERNAL {
			msg = "internal error"
		}
	}
	status := statusOf[code]
	if code == db.EINTERNAL {
		s.log.Error("request failed", "method", c.Method(), "path", c.Path(), "err", err)
	}
	if isAPI(c) {
		c.Status(status).Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(errorBody(code, msg))
	}
	if status == fiber.StatusUnauthorized {
		return c.Redirect("/login?next="+c.OriginalURL(), fiber.StatusSeeOther)
	}
	if rerr := s.handlers.ErrorPage(c, status, msg); rerr != nil {
		slog.Error("render error page", "err", rerr)
		return c.Status(status).SendString(msg)
	}
	return nil
}

// setRetryAfter tells a refused client when to come back (rate_limited,
// unavailable), unless the refusal already said so.
func setRetryAfter(c *fiber.Ctx, err error) {
	var e *db.Error
	if !errors.As(err, &e) || (e.Code != db.ERATELIMITED && e.Code != db.EUNAVAILABLE) {
		return
	}
	if len(c.Response().Header.Peek(fiber.HeaderRetryAfter)) == 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retrySeconds(e.RetryAfter)))
	}
}
