package carryovertype

import "regexp"

// TenantRule says in words what a tenant ID may be, as the tenants table's
// CHECK constraint does in SQL; every refusal of a tenant quotes it, so a
// producer learns the rule rather than the constraint's name.
const TenantRule = "1-63 lowercase letters, digits, '-' or '_', starting with a letter or digit"

var tenantID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ValidTenant reports whether s is a tenant ID the tenants table accepts
// (see TenantRule). Checking it before any statement turns a malformed
// tenant into a field error instead of a constraint violation.
func ValidTenant(s string) bool { return tenantID.MatchString(s) }
