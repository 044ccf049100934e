"""Items from real code: mining a package's functions, and real bugs from a repository's history."""
