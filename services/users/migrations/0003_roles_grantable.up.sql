-- An operator's mark that apps (user:roles:update) may grant and remove a
-- role carrying sensitive permissions; roles without one need no mark
-- (docs/users.md, Roles apps may grant). Unmarked by default: an existing
-- role such as admin is not grantable through the API after the upgrade.
ALTER TABLE roles ADD COLUMN grantable boolean NOT NULL DEFAULT false;
