package web

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/handlers"
	"github.com/seckill/seckill/views/i18n"
)

// fiberCodes turns Fiber's and fasthttp's own errors (unknown route, wrong
// method, body or headers too large, malformed request) into domain codes.
var fiberCodes = map[int]string{
	fiber.StatusNotFound:                    db.ENOTFOUND,
	fiber.StatusMethodNotAllowed:            db.ENOTFOUND,
	fiber.StatusRequestEntityTooLarge:       db.ETOOLARGE,
	fiber.StatusRequestHeaderFieldsTooLarge: db.ETOOLARGE,
	fiber.StatusRequestTimeout:              db.EINVALID,
	fiber.StatusBadRequest:                  db.EINVALID,
	fiber.StatusUnauthorized:                db.EUNAUTHORIZED,
	fiber.StatusForbidden:                   db.EFORBIDDEN,
	fiber.StatusTooManyRequests:             db.ERATELIMITED,
}

// keepStatus are Fiber statuses answered as they are, with the code above:
// the client learns which header or deadline it broke.
var keepStatus = map[int]bool{
	fiber.StatusRequestHeaderFieldsTooLarge: true,
	fiber.StatusRequestTimeout:              true,
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
// sentinelBodiesZh are the same in Chinese, for readers of the Chinese shop.
var sentinelBodies, sentinelBodiesZh = sentinels(i18n.En), sentinels(i18n.Zh)

func sentinels(l i18n.Lang) map[*db.Error][]byte {
	m := map[*db.Error][]byte{}
	for _, e := range []*db.Error{db.ErrSoldOut, db.ErrLimitReached, db.ErrAlreadyGrabbed, db.ErrNotStarted,
		db.ErrEnded, db.ErrExpired, db.ErrTooLate, db.ErrNotFound, db.ErrUnauthorized, db.ErrForbidden, db.ErrRateLimited,
		db.ErrPowRequired, db.ErrPowInvalid, db.ErrNotAdmitted, db.ErrQueueClosed, db.ErrNotDrawn} {
		m[e] = errorBody(e.Code, l.T(e.Message))
	}
	return m
}

func errorBody(code, msg string) []byte {
	var body ErrorBody
	body.Error.Code, body.Error.Message = code, msg
	b, _ := json.Marshal(body)
	return b
}

// isAPI tells whether the request gets the contract's JSON errors rather than pages.
func isAPI(c *fiber.Ctx) bool {
	p := c.Path()
	if strings.HasPrefix(p, "/api") || strings.HasPrefix(p, "/ws") {
		return true
	}
	if p == "/metrics" { // a scraper gets JSON; a person following make run's link, the sign-in page
		return !strings.Contains(c.Get(fiber.HeaderAccept), "text/html")
	}
	// fasthttp could not parse the request (its headers were too large, say),
	// so there is no path: its error quotes what it read of the request line.
	if terr, ok := c.Context().UserValue(transportErrKey{}).(error); ok {
		return strings.Contains(terr.Error(), " /api") || strings.Contains(terr.Error(), " /ws")
	}
	return false
}

// transportErrKey holds, on a fasthttp context, the error fasthttp met
// reading the request, before Fiber's error handler sees a tidied copy.
type transportErrKey struct{}

// errorHandler answers every error: the contract's JSON under /api, a friendly page elsewhere.
func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	if db.ErrorCode(err) == db.EINTERNAL && backend.Unavailable(err) {
		// Not a bug: Redis or the database did not answer. The client may
		// retry, and the log gets one line a second, not one per request.
		if ok, suppressed := s.unavailableLog.allow(); ok {
			s.log.Warn("request failed: a backend does not answer", "method", c.Method(), "path", c.Path(), "err", err, "suppressed", suppressed)
		}
		err = db.ErrUnavailable
	}
	setRetryAfter(c, err)
	zh := i18n.Of(c.UserContext()) == i18n.Zh
	if e, ok := err.(*db.Error); ok && isAPI(c) {
		bodies := sentinelBodies
		if zh {
			bodies = sentinelBodiesZh
		}
		if body, ok := bodies[e]; ok {
			c.Status(handlers.StatusOf(e.Code)).Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
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
		if fe.Code == fiber.StatusNotFound {
			msg = "no such page" // not Fiber's "Cannot GET /path"
			if isAPI(c) {
				msg = "no such endpoint"
			}
		}
		if code == db.EINTERNAL {
			msg = "internal error"
		}
		if c.Context().UserValue(transportErrKey{}) != nil {
			msg = transportMessage(fe.Code) // fasthttp's text quotes the raw request
		}
	}
	if fields := db.FieldsOf(err); zh && fields != nil && fe == nil {
		msg = fieldsMessage(i18n.Zh, fields)
	} else {
		msg = i18n.T(c.UserContext(), msg)
	}
	status := handlers.StatusOf(code)
	if fe != nil && keepStatus[fe.Code] {
		status = fe.Code
	}
	if code == db.EINTERNAL {
		s.log.Error("request failed", "method", c.Method(), "path", c.Path(), "err", err)
	}
	if isAPI(c) {
		c.Status(status).Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(errorBody(code, msg))
	}
	if status == fiber.StatusUnauthorized {
		return c.Redirect("/login?next="+url.QueryEscape(c.OriginalURL()), fiber.StatusSeeOther)
	}
	if status == fiber.StatusTooManyRequests {
		// A locked sign-in says so on its form, with the wait, not on an error page.
		retry, _ := strconv.Atoi(string(c.Response().Header.Peek(fiber.HeaderRetryAfter)))
		if handled, rerr := s.site.FormRefused(c, retry); handled {
			return rerr
		}
	}
	if rerr := s.site.ErrorPage(c, status, msg); rerr != nil {
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

// fieldsMessage is an invalid-input refusal's message in l: db's joined
// complaints in English; in Chinese each complaint translated on its own,
// as the joined message matches no format.
func fieldsMessage(l i18n.Lang, fields db.FieldErrors) string {
	if l == i18n.Zh {
		return fields.Join(l.T, "：", "；")
	}
	return fields.Join(nil, ": ", "; ")
}

// transportMessage is what a client is told about a request fasthttp could not read.
func transportMessage(status int) string {
	switch status {
	case fiber.StatusRequestHeaderFieldsTooLarge:
		return "the request's headers are too large"
	case fiber.StatusRequestEntityTooLarge:
		return "the request's body is too large"
	case fiber.StatusRequestTimeout:
		return "the request took too long to arrive"
	}
	return "malformed request"
}
