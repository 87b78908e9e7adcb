DROP TABLE dealer_applications;
DROP TABLE dealers;
