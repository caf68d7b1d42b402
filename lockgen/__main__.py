from lockgen.cli import main

raise SystemExit(main())
