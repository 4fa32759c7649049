-- Undo revision 0027: the server's default TOAST target for chunks.
ALTER TABLE chunks RESET (toast_tuple_target);
