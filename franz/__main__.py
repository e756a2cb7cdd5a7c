from franz.cli.main import main

raise SystemExit(main())
