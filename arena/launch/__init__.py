"""Starting bot processes: the launcher (sandbox level), process control, builds."""
