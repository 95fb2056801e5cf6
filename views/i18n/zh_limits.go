package i18n

// The refusals whose numbers come from the input ceilings' table
// (db/model/limits.go).
func init() {
	add(map[string]string{
		"must be %d–%d":                                      "须为 %d–%d",
		"must be %s–%s":                                      "须为 %s–%s",
		"must be %d–%d characters":                           "须为 %d–%d 个字符",
		"must be %d–%d for a percentage off":                 "折扣百分比须为 %d–%d",
		"must be at least %s cent for an amount off":         "满减金额至少 %s 分",
		"must be at most %s cents for an amount off":         "满减金额最多 %s 分",
		"must be at most %s cents":                           "最多 %s 分",
		"must be between %d and %d":                          "须在 %d 到 %d 之间",
		"must be between %d and %d cents":                    "须在 %d 到 %d 分之间",
		"must be within %d days from now":                    "必须在 %d 天以内",
		"Idempotency-Key must be %d–%d printable characters": "Idempotency-Key 须为 %d–%d 个可打印字符",
		"X-Request-ID must be at most %d characters":         "X-Request-ID 最多 %d 个字符",
		"count is required: %d to %d":                        "count 为必填项：%d 到 %d",
		"count must be %d to %d":                             "count 须为 %d 到 %d",
		"Proof-of-work floor (bits, %d–%d) [0]":              "防刷验证最低难度（%d–%d）[0]",
	})
}
