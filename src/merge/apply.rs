//! Applying patches to objects, as the API server does (owned by the server work).
