"""Options: the registry of every option honoured (key, default, check, doc) with Paimon's other keys
(paimon_option_keys.txt), storage settings, and Java's time patterns and zones."""
