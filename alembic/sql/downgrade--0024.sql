-- Undo revision 0024: the server's default TOAST target for memories.
ALTER TABLE memories RESET (toast_tuple_target);
