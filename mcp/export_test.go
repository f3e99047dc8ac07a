package mcp

// EndLife does what Close does first: it ends the Server's life, so that
// calls waiting for an answer end, without taking the lock or closing the
// session (tests reach the window between the two with it).
func EndLife(s *Server) { s.endLife(ErrClosed) }
