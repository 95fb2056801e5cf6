package handlers

import (
	"bytes"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// QueueRoom answers a waiting room's public commitment, to anyone: GET
// /api/goods/{id}/queue/room → {goods_id, seed_hash, joined, started, seed?}.
func (h *Fair) QueueRoom(c *fiber.Ctx) error {
	id, err := paramID(c, "id")
	if err != nil {
		return err
	}
	room, err := h.Fair.QueueRoom(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.JSON(room)
}

// priorityCode reads the code of a queue join's body {code}, if it has one
// (a join without a body, or with a null code, is an ordinary one). Text
// that cannot be a code (blank, too long, spaces or control characters
// within) is invalid; whether a code is one, the store says.
func priorityCode(c *fiber.Ctx) (string, bool, error) {
	if len(bytes.TrimSpace(c.Body())) == 0 {
		return "", false, nil
	}
	var in struct {
		Code *string `json:"code"`
	}
	if err := bind(c, &in); err != nil {
		return "", false, err
	}
	if in.Code == nil {
		return "", false, nil
	}
	code := strings.TrimSpace(*in.Code)
	if code == "" {
		return "", false, db.FieldErrorf("code", "is required: the priority code you were given")
	}
	if int64(len(code)) > model.QueueCode.Max || strings.ContainsFunc(code, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "", false, db.FieldErrorf("code", "must be a priority code: letters and digits, as you were given it")
	}
	return code, true, nil
}

// joinQueueCode admits the caller at once with a priority code: 201 with
// the admitted ticket; an unknown, used or another goods' code is 409 conflict.
func (h *Fair) joinQueueCode(c *fiber.Ctx, code string) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	t, err := h.Fair.JoinQueueCode(c.UserContext(), cl.UserID, id, code)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"ticket": t})
}

// QueueCodes makes priority codes of a waiting room: POST
// /api/admin/goods/{id}/queue/codes {count, note} → 201 {codes} (audited
// as every admin change; the codes themselves are not in the entry).
func (h *Fair) QueueCodes(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	var in struct {
		Count *int   `json:"count"`
		Note  string `json:"note"`
	}
	if err := bind(c, &in); err != nil {
		return err
	}
	if in.Count == nil {
		return db.Errorf(db.EINVALID, "count is required: %d to %d", model.QueueCodes.Min, model.QueueCodes.Max)
	}
	codes, err := h.Fair.QueueCodes(c.UserContext(), cl, id, *in.Count, in.Note)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"codes": codes})
}
