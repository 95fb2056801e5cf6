package handlers

import (
	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/db"
)

// statuses are what one domain error code is answered with: API is the
// status of the contract's JSON error (docs/openapi.yaml); Form is the
// status of the page that shows the refusal beside the form it came from,
// 0 where a form does not show it (not found, forbidden, rate limited,
// unavailable, internal: the error handler answers those with its page).
type statuses struct{ API, Form int }

// errorTable is the one table from domain error codes to HTTP statuses.
var errorTable = map[string]statuses{
	db.EINVALID:       {fiber.StatusBadRequest, fiber.StatusUnprocessableEntity},
	db.EUNAUTHORIZED:  {fiber.StatusUnauthorized, fiber.StatusUnauthorized},
	db.EFORBIDDEN:     {fiber.StatusForbidden, 0},
	db.ENOTFOUND:      {fiber.StatusNotFound, 0},
	db.ECONFLICT:      {fiber.StatusConflict, fiber.StatusConflict},
	db.ESOLDOUT:       {fiber.StatusConflict, fiber.StatusConflict},
	db.ELIMITREACHED:  {fiber.StatusConflict, fiber.StatusConflict},
	db.EALREADY:       {fiber.StatusConflict, fiber.StatusConflict},
	db.ENOTSTARTED:    {fiber.StatusConflict, fiber.StatusConflict},
	db.EENDED:         {fiber.StatusConflict, fiber.StatusConflict},
	db.EEXPIRED:       {fiber.StatusConflict, fiber.StatusConflict},
	db.ETOOLATE:       {fiber.StatusConflict, fiber.StatusConflict},
	db.ENOTCONFIGURED: {fiber.StatusConflict, fiber.StatusConflict},
	db.ERATELIMITED:   {fiber.StatusTooManyRequests, 0},
	db.ETOOLARGE:      {fiber.StatusRequestEntityTooLarge, fiber.StatusRequestEntityTooLarge},
	db.EUNAVAILABLE:   {fiber.StatusServiceUnavailable, 0},
	db.EINTERNAL:      {fiber.StatusInternalServerError, 0},
	db.EPOWREQUIRED:   {fiber.StatusForbidden, 0},
	db.EPOWINVALID:    {fiber.StatusForbidden, 0},
	db.ENOTADMITTED:   {fiber.StatusForbidden, fiber.StatusForbidden},
	db.EQUEUECLOSED:   {fiber.StatusConflict, fiber.StatusConflict},
	db.ENOTDRAWN:      {fiber.StatusConflict, fiber.StatusConflict},
}

// StatusOf is the API status of a domain error code.
func StatusOf(code string) int {
	if s, ok := errorTable[code]; ok {
		return s.API
	}
	return fiber.StatusInternalServerError
}

// Codes lists every code the table answers.
func Codes() []string {
	out := make([]string, 0, len(errorTable))
	for code := range errorTable {
		out = append(out, code)
	}
	return out
}

// refusal tells whether err is a refusal that the form it came from shows
// to the user, and the status of the page showing it. Any other error is
// the error handler's, which answers it with its own page (and a Redis or
// database that did not answer with 503 and Retry-After).
func refusal(err error) (status int, shown bool) {
	if err == nil {
		return 0, false
	}
	s := errorTable[db.ErrorCode(err)].Form
	return s, s != 0
}

// invalidForm is the status of a page whose form the handler itself found
// badly filled in (a field that does not parse).
var invalidForm = errorTable[db.EINVALID].Form
