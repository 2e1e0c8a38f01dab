from tfvariants.cli import main

raise SystemExit(main())
