package web

import (
	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db/audit"
	"github.com/seckill/seckill/handlers"
)

// auditRefund records a refund that went through as order.refund on
// order:ID (refunds are audited beside admin changes and sign-ins). Like
// audit, it runs after the change and never turns it into an error.
func (s *Server) auditRefund(c *fiber.Ctx) error {
	err := c.Next()
	if st := c.Response().StatusCode(); err != nil || st < 200 || st >= 300 {
		return err
	}
	cl, _ := handlers.ClaimsOf(c)
	e := audit.Entry{ActorID: cl.UserID, Actor: cl.Username, IP: handlers.ClientIPText(c), Action: "order.refund", Target: "order:" + c.Params("id")}
	if aerr := s.audits.Append(c.UserContext(), e); aerr != nil {
		s.log.Error("audit", "action", e.Action, "target", e.Target, "err", aerr)
	}
	return err
}
