package account

import (
	"regexp"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9_]{3,32}$`)

// ValidateCredentials checks a username and password against the account rules.
func ValidateCredentials(username, password string) error {
	if !usernameRE.MatchString(username) {
		return db.Errorf(db.EINVALID, "username must be 3–32 letters, digits or underscores")
	}
	return validatePassword(password)
}

func validatePassword(password string) error {
	if len(password) < 8 || len(password) > 72 {
		return db.Errorf(db.EINVALID, "password must be 8–72 bytes")
	}
	return nil
}

// ValidRole reports whether role is one of the known roles.
func ValidRole(role string) bool {
	return role == model.RoleUser || role == model.RoleMerchant || role == model.RoleAdmin
}
