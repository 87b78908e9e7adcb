ALTER TABLE clients DROP COLUMN post_logout_redirect_uris;
